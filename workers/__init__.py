"""Distribution: the single-process runner and the Ray pipeline. No scoring logic of their own."""
