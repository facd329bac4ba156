"""LLM providers: registered plugins (entry-point group ``arkai.providers``) behind one runner."""
