"""Pure renderers: they read the model and the results store, never a server."""
