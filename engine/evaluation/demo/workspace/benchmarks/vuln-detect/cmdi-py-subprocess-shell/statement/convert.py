import subprocess


def convert(src: str, fmt: str) -> int:
    cmd = f"ffmpeg -i {src} out.{fmt}"
    return subprocess.call(cmd, shell=True)


if __name__ == "__main__":
    convert(input("file: "), input("format: "))
