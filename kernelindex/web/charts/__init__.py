"""The server-side SVG charts: plain values in, drawn by the templates."""
