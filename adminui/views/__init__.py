"""Console views, one module per page kind. Thin: read through selectors, write through
services, access through adminui.access.console_view."""
