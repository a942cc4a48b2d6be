"""``python -m openseal``: the same as the ``openseal`` command."""

from openseal.cli.main import run

if __name__ == "__main__":
    run()
