"""Governance: who may see an insight, what needs a reviewer first, and what must never become a rule."""
