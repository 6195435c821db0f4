from citewell.cli import main

main()
