"""(public face filled in the next commit)."""
