"""How MkDocs runs the plugin: the build modes, the quick preview and what the preview server
adds."""
