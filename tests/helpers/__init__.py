"""What several test files share: servers and databases (``db``), the command line
(``cli``), a terminal in tmux (``terminal``), and the records each area builds its tests from
(``advise``, ``report``, one module per study)."""
