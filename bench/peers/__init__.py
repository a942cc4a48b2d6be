"""Peer scripts: run inside ``bench/.venv-peers``; openseal never imports them."""
