"""One module per pipeline stage; each public function is one Snakemake rule's body."""
