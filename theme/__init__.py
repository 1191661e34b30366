"""The bundled theme: jinja2 templates and assets (installed as package data rootcause.theme)."""
