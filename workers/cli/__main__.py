"""``python -m workers.cli``: the ``lfqa-rubric`` command."""

from workers.cli import main

raise SystemExit(main())
