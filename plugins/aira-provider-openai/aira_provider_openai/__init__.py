"""Aira's OpenAI-compatible provider plugin (entry point ``openai``): see README.md."""
