from vacuumlab.cli import main

main()
