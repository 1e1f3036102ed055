import base64
import pickle

from flask import request


def current_cart():
    raw = request.cookies.get("cart", "")
    return pickle.loads(base64.b64decode(raw))
