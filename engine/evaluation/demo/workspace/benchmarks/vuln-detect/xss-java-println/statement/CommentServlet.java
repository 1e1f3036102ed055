package com.blog;

import java.io.IOException;
import java.io.PrintWriter;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class CommentServlet extends HttpServlet {
    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        PrintWriter out = resp.getWriter();
        String agent = req.getHeader("User-Agent");
        out.println("<p>" + req.getParameter("comment") + "</p>");
        out.println("<!-- " + agent.length() + " -->");
    }
}
