"""``python -m chainloom_dev`` runs the ``chainloom-dev`` command."""

from chainloom_dev.cli import main

main()
