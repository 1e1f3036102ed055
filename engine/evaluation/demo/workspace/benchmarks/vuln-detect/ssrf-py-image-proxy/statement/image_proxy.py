import requests
from flask import Flask, request

app = Flask(__name__)


@app.route("/image")
def image():
    src = request.args.get("src")
    return requests.get(src, timeout=3).content
