"""Output: what the compiler writes for machines and people.

Owns the compiled documents (``emit``, ``document``) and their canonical JSON and
digests (``canonical``), bundles on disk (``bundle``), the JSON Schemas of the
model (``schemas``), the semantic diff of two compiles (``diff``), graph drawings
(``draw``) and diagnostics rendered for terminals, JSON, SARIF and GitHub
(``render_diagnostics``).
"""
