import hashlib

from flask import Flask, request

from .models import User, save_user

app = Flask(__name__)


@app.route("/register", methods=["POST"])
def register():
    name = request.form["name"]
    ref = request.args.get("ref", "")
    digest = hashlib.md5(request.form["password"].encode()).hexdigest()
    save_user(User(name=name, password_hash=digest, referrer=ref))
    return {"ok": True}


def cli_register():
    name = input("name: ")
    save_user(User(name=name, password_hash=hashlib.md5(input("password: ").encode()).hexdigest()))
