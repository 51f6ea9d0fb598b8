"""Model backends behind one small interface; heavy imports happen inside functions."""
