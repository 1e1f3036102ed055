<?php
$q = $_GET['q'];
echo "<h2>Results for " . $_GET['q'] . "</h2>";
