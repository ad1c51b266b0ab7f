"""``python -m chainloom.cli`` runs the ``chainloom`` command."""

from chainloom.cli import main

main()
