<?php
define('DB_HOST', 'localhost');
define('DB_USER', 'shop');
$db_password = 'hunter2-demo';
$mysqli = new mysqli(DB_HOST, DB_USER, $db_password, 'shop');
