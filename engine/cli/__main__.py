from engine.cli import run

if __name__ == "__main__":  # importing this module must not start the CLI
    run()
