from chainloom_dev.cli import main

main()
