from tokenpace.cli import main

main()
