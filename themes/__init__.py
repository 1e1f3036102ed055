"""Textual stylesheets and colour themes, shipped as package data."""
