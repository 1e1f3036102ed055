from flask import request, render_template_string


def hello():
    return render_template_string("<h1>Hello " + request.args["name"] + "</h1>")
