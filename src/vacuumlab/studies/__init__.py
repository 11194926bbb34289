"""One module per study: its parameter matrix, set-up, run and summary."""
