<?php
$host = $_GET['host'];
echo "<pre>";
system("nslookup " . $host);
echo "</pre>";
