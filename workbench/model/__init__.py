"""The application model: no Qt."""
