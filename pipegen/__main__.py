from pipegen.cli import main

main()
