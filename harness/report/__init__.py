"""The files of a run: report.json, junit.xml, summary.md, report.html and its plots."""
