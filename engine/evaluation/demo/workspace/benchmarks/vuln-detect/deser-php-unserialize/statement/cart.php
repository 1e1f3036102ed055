<?php
include 'session.php';

$cart = unserialize(base64_decode($_COOKIE['cart']));
echo count($cart->items);
