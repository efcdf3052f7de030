"""`python -m tokenpace`: the same commands as the `tokenpace` script."""

from tokenpace.cli import main

if __name__ == "__main__":
    main()
