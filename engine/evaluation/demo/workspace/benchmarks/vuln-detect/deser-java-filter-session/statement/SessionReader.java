package com.shop.session;

import com.shop.Session;
import java.io.IOException;
import java.io.InputStream;
import org.apache.commons.io.serialization.ValidatingObjectInputStream;

public class SessionReader {
    public Session load(InputStream in) throws IOException, ClassNotFoundException {
        return (Session) new ValidatingObjectInputStream(in).accept(Session.class).readObject();
    }
}
