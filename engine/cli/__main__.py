from engine.cli import run

if __name__ == "__main__":  # build_parser imports every module here; only `-m` may run
    run()
