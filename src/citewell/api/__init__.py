"""The HTTP API: an adapter that translates requests to the application and back."""
