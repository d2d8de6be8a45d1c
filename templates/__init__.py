"""pipegen's Jinja templates (shipped in the wheel as the package pipegen.templates)."""
