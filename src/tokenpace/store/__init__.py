"""Storage: the only code that writes SQL against samples and runs; windows and series read there too."""
