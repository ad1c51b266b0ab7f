"""``python -m chainloom`` runs the ``chainloom`` command (as the installed script does)."""

from chainloom.cli import main

main(prog_name="chainloom")
