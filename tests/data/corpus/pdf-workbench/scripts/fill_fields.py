"""Fill a PDF form's fields from a JSON file of {field name: value}."""

import json
import sys

from pypdf import PdfReader, PdfWriter


def main(source: str, values: str, target: str) -> None:
    writer = PdfWriter(clone_from=PdfReader(source))
    data = json.loads(open(values, encoding="utf-8").read())
    for page in writer.pages:
        writer.update_page_form_field_values(page, data, auto_regenerate=False)
    writer.write(target)


if __name__ == "__main__":
    main(*sys.argv[1:4])
