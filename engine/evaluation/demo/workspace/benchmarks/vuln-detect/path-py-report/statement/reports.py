from flask import Flask, request

app = Flask(__name__)
REPORT_DIR = "/srv/reports/"


@app.route("/report")
def report():
    with open(REPORT_DIR + request.args["name"]) as fh:
        return fh.read()
