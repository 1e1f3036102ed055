<?php
$file = $_GET['f'];
header('Content-Type: application/octet-stream');
readfile('/var/www/files/' . $file);
