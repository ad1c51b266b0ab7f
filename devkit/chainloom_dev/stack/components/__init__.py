"""One module per stack component; :data:`ALL` lists them in start order."""
