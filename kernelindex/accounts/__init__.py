"""Accounts and their protections: passwords, sessions, CSRF tokens, API keys, rate limits."""
