"""The web application: one module per page family, the templates' context, middleware."""
