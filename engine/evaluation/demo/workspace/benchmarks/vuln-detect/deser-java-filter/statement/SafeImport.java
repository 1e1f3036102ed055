package com.shop.importer;

import com.shop.Cart;
import java.io.IOException;
import java.io.InputStream;
import org.apache.commons.io.serialization.ValidatingObjectInputStream;

public class SafeImport {
    public Object read(InputStream body) throws IOException, ClassNotFoundException {
        return new ValidatingObjectInputStream(body).accept(Cart.class).readObject();
    }
}
