"""Print the fillable fields of a PDF form: name, type and current value, one per line."""

import sys

from pypdf import PdfReader


def main(path: str) -> None:
    fields = PdfReader(path).get_fields() or {}
    for name, field in fields.items():
        print(f"{name}\t{field.get('/FT', '?')}\t{field.get('/V', '')}")


if __name__ == "__main__":
    main(sys.argv[1])
