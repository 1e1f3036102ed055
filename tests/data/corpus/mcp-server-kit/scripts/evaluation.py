#!/usr/bin/env python3
"""Run an MCP server's evaluation questions (an XML file of <qa_pair>s) and print the score."""

import sys
import xml.etree.ElementTree as ET


def load(path: str) -> list[tuple[str, str]]:
    root = ET.parse(path).getroot()
    return [(qa.findtext("question", ""), qa.findtext("answer", "")) for qa in root.iter("qa_pair")]


def main(path: str) -> int:
    pairs = load(path)
    print(f"{len(pairs)} questions loaded from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
