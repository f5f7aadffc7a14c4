"""Attachments as the model sees them: `sniff` (what a file really is), `download` (SSRF-guarded fetch),
`prepare` (inline what a provider cannot reach). Import from the submodules."""
