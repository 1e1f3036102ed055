"""``python -m tui``: the same entry point as the ``skillsmith`` console script."""

from tui.launch import main

if __name__ == "__main__":
    main()
