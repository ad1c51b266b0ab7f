"""The Spark jobs, one module each with a ``main(argv)``."""
