"""Pages out: the checked encyclopedia as Markdown pages, JSON exports and what each built HTML
page gets afterwards."""
