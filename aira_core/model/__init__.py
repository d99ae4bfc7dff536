"""The AMIR model: documents, patches, revisions, aliases and pages."""
